"""``hepwb ner-serve`` (registered on :data:`hepwb.cli.app`)."""

from __future__ import annotations

from typing import Annotated

import typer

from hepwb.cli_app import app
from hepwb.ner.service import NERService


@app.command("ner-serve")
def ner_serve(
    port: Annotated[int, typer.Option(help="TCP port on 127.0.0.1 (0: a free one).")] = 8765,
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
) -> None:
    """Serve HEP named-entity recognition over HTTP: POST /ner {"texts": [...]} -> entities; GET /health.

    The model is hepwb's HEP entity dictionary and rules (collaborations, particles, energies, luminosities).
    """
    service = NERService(host=host, port=port)
    typer.echo(f"NER service ({service.model}) on {service.url}/ner; Ctrl-C stops it")
    try:
        service.serve_forever()
    except KeyboardInterrupt:
        typer.echo("stopped")
    finally:
        service.stop()
