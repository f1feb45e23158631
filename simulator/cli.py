"""`creditlens simulate`: serve a simulated platform on loopback for the demo and for trials."""

from __future__ import annotations

import ipaddress
from datetime import datetime
from typing import Annotated

import typer
from pydantic import ValidationError

from simulator.core import Simulator
from simulator.network import NetworkSpec, parse_latency, parse_rate
from simulator.scenario import Scenario
from simulator.server import bind_socket, make_server


def network_from_flags(
    base: NetworkSpec,
    latency_ms: str | None = None,
    rate_limit: str | None = None,
    burst: int | None = None,
) -> NetworkSpec:
    """The scenario's network with the flags given laid over it, field by field.

    `--latency-ms 80` sets the mean and a jitter of 0; `--rate-limit` replaces the rate and keeps
    the scenario's burst unless `--burst` is given; `--rate-limit off` removes the limit (and its
    burst). Errors are typer.BadParameter naming the flag, so typer shows a usage error (exit 2).
    """
    fields = base.model_dump()
    if latency_ms is not None:
        try:
            fields["latency_ms"], fields["jitter_ms"] = parse_latency(latency_ms)
        except ValueError as error:
            raise typer.BadParameter(str(error), param_hint="--latency-ms") from None
    if rate_limit is not None:
        try:
            fields["rate_limit_per_s"] = parse_rate(rate_limit)
        except ValueError as error:
            raise typer.BadParameter(str(error), param_hint="--rate-limit") from None
        if fields["rate_limit_per_s"] is None:
            fields["burst"] = None
    if burst is not None:
        if fields["rate_limit_per_s"] is None:
            raise typer.BadParameter(
                "a burst needs a rate limit (--rate-limit N/s, or the scenario's network)",
                param_hint="--burst",
            )
        fields["burst"] = burst
    try:
        return NetworkSpec.model_validate(fields)
    except ValidationError as error:  # e.g. --burst 0: typer's min=1 catches it first
        raise typer.BadParameter(str(error), param_hint="--burst") from None


def is_loopback(host: str) -> bool:
    """Only this machine can reach the interface: the one place test keys may be printed."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def key_lines(sim: Simulator, demo_key: str, print_keys: bool) -> list[str]:
    """Each company and its keys: fingerprints, unless ``print_keys`` asks for the keys
    themselves (test keys of this simulator, said on every such line); the extra --key is
    shown as given, since whoever started the simulator typed it."""
    lines = []
    for company in sim.companies:
        lines.append(f"company {company.name}:")
        for api_key in company.keys:
            flags = " (revoked)" if api_key.revoked else ""
            if print_keys and api_key.secret != demo_key:
                flags += " (test key of this simulator; loopback only)"
            clear = print_keys or api_key.secret == demo_key
            shown = api_key.secret if clear else f"sha256:{api_key.fingerprint}"
            lines.append(f"  key {api_key.label:<16} scope={api_key.scope:<9} {shown}{flags}")
    return lines


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
    latency_ms: Annotated[
        str | None,
        typer.Option(
            "--latency-ms",
            metavar="MEAN[,JITTER]",
            help="Round trip added to every request, in ms, uniform within MEAN +/- JITTER "
            "(80 or 80,20); default: the scenario's, else none.",
        ),
    ] = None,
    rate_limit: Annotated[
        str | None,
        typer.Option(
            "--rate-limit",
            metavar="N/s",
            help="Per-key token bucket: N requests a second (20/s, 0.5/s); 429 with Retry-After "
            "when empty; 'off' drops the scenario's limit; default: the scenario's, else none.",
        ),
    ] = None,
    burst: Annotated[
        int | None,
        typer.Option(
            "--burst",
            min=1,
            metavar="B",
            help="Requests a key may send at once (bucket size); default: N rounded up.",
        ),
    ] = None,
    print_keys: Annotated[
        bool,
        typer.Option(
            "--print-keys",
            help="Print every company's test keys themselves, not their fingerprints, to "
            "configure a client against this simulator (only with a loopback --host).",
        ),
    ] = False,
) -> None:
    """Serves the simulated billing API until Ctrl-C; prints companies and key fingerprints
    (the keys themselves with --print-keys)."""
    if print_keys and not is_loopback(host):
        raise typer.BadParameter(
            f"prints the keys in clear, so only with a loopback --host (got {host!r})",
            param_hint="--print-keys",
        )
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
    network = network_from_flags(chosen.network, latency_ms, rate_limit, burst)
    sim = Simulator(chosen, seed=seed, now=moment, demo_key=key, network=network)
    sock = bind_socket(host, port)
    shown_host = f"[{host}]" if ":" in host else host
    typer.echo(f"scenario {chosen.name!r}, seed {seed}, now {sim.clock.now.isoformat()}")
    for line in key_lines(sim, key, print_keys):
        typer.echo(line)
    typer.echo(f"network: {network.describe()}")
    typer.echo(f"listening on http://{shown_host}:{sock.getsockname()[1]}", err=False)
    server = make_server(sim, log_level="warning")
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass  # uvicorn re-raises Ctrl-C after its graceful shutdown; stopping is success here
    finally:
        sock.close()
    typer.echo("simulator stopped")
