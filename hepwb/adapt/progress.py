"""Training progress of ``hepwb adapt``: one bar with the epoch, the step and the current loss.

transformers shows training its own way: in a notebook ``NotebookProgressCallback`` draws an HTML
"Training Loss" table that stays empty until the first logging step, in a terminal its bar is
interleaved with printed log dicts, and with ``disable_tqdm`` its ``PrinterCallback`` prints those
dicts alone. :func:`show_training` removes all three from a trainer and adds a callback driving a
:class:`TrainingBar` instead: a :mod:`tqdm.auto` bar like every other hepwb stage's (a widget in a
notebook, never red stderr text there; a text bar in a terminal), updated at every optimizer step
with the loss of that step.

Example:
    >>> bar = TrainingBar("training demo", progress=False)
    >>> bar.begin(4)
    >>> bar.update(2, epoch=0.5, loss=0.75)
    >>> bar.step, bar.postfix
    (2, {'epoch': '0.50', 'loss': '0.7500'})
    >>> bar.close()
"""

from __future__ import annotations

from typing import Any

__all__ = ["TrainingBar", "show_training"]


class TrainingBar:
    """A :mod:`tqdm.auto` bar over training steps, its postfix the epoch and the last logged loss.

    Args:
        desc: The bar's label, e.g. ``"training hep-minilm"``.
        progress: Whether to show it (``False``: nothing is drawn, the state is still kept).
    """

    def __init__(self, desc: str, *, progress: bool = True) -> None:
        self.desc = desc
        self.progress = progress
        self.step = 0
        self.loss: float | None = None
        self.postfix: dict[str, str] = {}
        self._bar: Any = None

    def begin(self, total: int) -> None:
        """Open the bar for ``total`` optimizer steps."""
        from tqdm.auto import tqdm

        self.close()
        self.step = 0
        self._bar = tqdm(total=total, desc=self.desc, unit="step", disable=not self.progress)

    def update(self, step: int, *, epoch: float | None = None, loss: float | None = None) -> None:
        """Move the bar to optimizer step ``step``; show ``epoch`` and ``loss`` (the last one seen)."""
        if loss is not None:
            self.loss = float(loss)
        self.postfix = {"epoch": f"{epoch or 0.0:.2f}"}
        if self.loss is not None:
            self.postfix["loss"] = f"{self.loss:.4f}"
        if self._bar is not None:
            self._bar.set_postfix(self.postfix, refresh=False)
            self._bar.update(max(step - self.step, 0))  # redraws, postfix included
            if step == self.step:
                self._bar.refresh()
        self.step = max(step, self.step)

    def close(self) -> None:
        """Close the bar (a notebook keeps the finished widget, a terminal its last line)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def show_training(trainer: Any, desc: str, *, progress: bool = True) -> TrainingBar:
    """Make ``trainer`` (a transformers ``Trainer``) show its training as one :class:`TrainingBar`.

    transformers' progress and printer callbacks are removed (see the module docstring); the
    returned bar's callback moves it at each optimizer step and takes the loss from each log.
    Loss is logged at ``logging_steps``: set it to 1 for the loss of every step.

    Args:
        trainer: The trainer, before ``train()``.
        desc: The bar's label.
        progress: Whether to draw the bar.
    """
    from transformers import TrainerCallback
    from transformers.trainer_callback import PrinterCallback, ProgressCallback
    from transformers.utils.notebook import NotebookProgressCallback

    bar = TrainingBar(desc, progress=progress)

    class _BarCallback(TrainerCallback):
        def on_train_begin(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            bar.begin(int(state.max_steps))

        def on_step_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            bar.update(int(state.global_step), epoch=state.epoch)

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **_: Any) -> None:
            if logs and "loss" in logs:
                bar.update(int(state.global_step), epoch=state.epoch, loss=float(logs["loss"]))

        def on_train_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            bar.close()

    for own in (PrinterCallback, ProgressCallback, NotebookProgressCallback):
        while any(isinstance(cb, own) for cb in trainer.callback_handler.callbacks):
            trainer.remove_callback(own)
    trainer.add_callback(_BarCallback())
    return bar
