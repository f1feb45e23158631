"""`creditlens simulate`: serve a simulated platform on loopback for the demo and for trials."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer

from simulator.core import Simulator
from simulator.scenario import Scenario
from simulator.server import bind_socket, make_server


def simulate(
    host: Annotated[
        str, typer.Option(help="Interface to listen on; keep loopback unless you mean it.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port; 0 picks a free one.")] = 8765,
    seed: Annotated[int, typer.Option(help="Seed of all generated data.")] = 0,
    key: Annotated[
        str,
        typer.Option(help="An extra full-scope API key accepted for the first company."),
    ] = "demo-key",
    scenario: Annotated[
        str, typer.Option(help="A scenario NAME (default, small, ...) or a YAML/JSON FILE path.")
    ] = "default",
    now: Annotated[
        str | None,
        typer.Option(help="The simulated now (ISO 8601, UTC when no offset); default: real now."),
    ] = None,
) -> None:
    """Serves the simulated billing API until Ctrl-C; prints companies and key fingerprints."""
    try:
        chosen = Scenario.resolve(scenario)
    except (ValueError, OSError) as error:
        raise typer.BadParameter(str(error), param_hint="--scenario") from None
    try:
        moment = datetime.fromisoformat(now) if now else None
    except ValueError:
        raise typer.BadParameter(
            f"not an ISO 8601 date-time: {now!r}", param_hint="--now"
        ) from None
    sim = Simulator(chosen, seed=seed, now=moment, demo_key=key)
    sock = bind_socket(host, port)
    shown_host = f"[{host}]" if ":" in host else host
    typer.echo(f"scenario {chosen.name!r}, seed {seed}, now {sim.clock.now.isoformat()}")
    for company in sim.companies:
        typer.echo(f"company {company.name}:")
        for api_key in company.keys:
            flags = " (revoked)" if api_key.revoked else ""
            shown = api_key.secret if api_key.secret == key else f"sha256:{api_key.fingerprint}"
            typer.echo(f"  key {api_key.label:<16} scope={api_key.scope:<9} {shown}{flags}")
    typer.echo(f"listening on http://{shown_host}:{sock.getsockname()[1]}", err=False)
    server = make_server(sim, log_level="warning")
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass  # uvicorn re-raises Ctrl-C after its graceful shutdown; stopping is success here
    finally:
        sock.close()
    typer.echo("simulator stopped")
