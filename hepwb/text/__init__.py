"""Text keys and names: evidence-matching keys, content-hash IDs, safe names, printable text, labels.

:mod:`hepwb.text.textkey` is the evidence-matching rule, :mod:`hepwb.text.ids` the deterministic
identifiers, :mod:`hepwb.text.names` the rule for every name that becomes a file,
:mod:`hepwb.text.plaintext` corpus text made safe to print and :mod:`hepwb.text.labels` the human name of
every metric and configuration column.
"""
