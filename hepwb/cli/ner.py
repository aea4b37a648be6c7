"""``hepwb ner-serve`` (registered on :data:`hepwb.cli.base.app`)."""

from __future__ import annotations

from typing import Annotated

import typer

from hepwb import defaults, limits
from hepwb.cli.base import app
from hepwb.ner.service import TOKEN_ENV, NERService


@app.command("ner-serve")
def ner_serve(
    port: Annotated[
        int, typer.Option(min=0, max=limits.MAX_PORT, help="TCP port on 127.0.0.1 (0: a free one).")
    ] = defaults.NER_PORT,
    host: Annotated[
        str,
        typer.Option(help="Interface to listen on; any but loopback (e.g. 0.0.0.0) needs --token."),
    ] = "127.0.0.1",
    token: Annotated[
        str | None,
        typer.Option(
            envvar=TOKEN_ENV,
            show_envvar=True,
            show_default=False,
            help="Requests must send 'Authorization: Bearer TOKEN' (clients read HEPWB_NER_TOKEN). "
            "Required off loopback.",
        ),
    ] = None,
) -> None:
    """Serve HEP named-entity recognition over HTTP: POST /ner {"texts": [...]} -> entities; GET /health.

    The model is hepwb's HEP entity dictionary and rules (collaborations, particles, energies, luminosities).
    On 127.0.0.1 (the default) it needs no token; on any other address it refuses to start without one.
    """
    service = NERService(host=host, port=port, token=token)
    access = (
        f"token required (Authorization: Bearer …; clients set {TOKEN_ENV})"
        if service.token
        else "this machine only, no token"
    )
    typer.echo(f"NER service ({service.model}) on {service.url}/ner, {access}; Ctrl-C stops it")
    try:
        service.serve_forever()
    except KeyboardInterrupt:
        typer.echo("stopped")
    finally:
        service.stop()
