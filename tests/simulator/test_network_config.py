"""Network conditions without a server: bucket arithmetic on a fake clock, latency draws, the
one model (NetworkSpec) from scenario files, Python and CLI flags, and the flags' errors."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
import typer
from pydantic import ValidationError
from typer.testing import CliRunner

import simulator.cli as cli
from simulator import NetworkSpec, Scenario, Simulator
from simulator.network import Network, parse_latency, parse_rate
from simulator.ratelimit import RateLimiter
from tests.simulator.conftest import NOW


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


# token bucket ------------------------------------------------------------------------------


def test_burst_then_refusal_with_whole_seconds_until_a_token() -> None:
    clock = FakeClock()
    limiter = RateLimiter(2, 3, clock)
    answers = [limiter.admit("k") for _ in range(4)]
    assert [a.allowed for a in answers] == [True, True, True, False]
    assert [a.remaining for a in answers] == [2, 1, 0, 0]
    assert answers[3].retry_after_s == 1  # 0.5 s rounds up to a whole second
    slow = RateLimiter(0.25, 1, clock)
    assert slow.admit("k").allowed
    assert slow.admit("k").retry_after_s == 4
    clock.now += 3.5
    assert slow.admit("k").retry_after_s == 1  # 0.5 s left: at least 1
    clock.now += 0.5
    assert slow.admit("k").allowed


def test_refused_requests_take_no_token() -> None:
    clock = FakeClock()
    limiter = RateLimiter(1, 1, clock)
    assert limiter.admit("k").allowed
    for _ in range(50):  # a client hammering without waiting
        clock.now += 0.01
        assert not limiter.admit("k").allowed
    clock.now = 101.0  # one second after the only token was taken
    assert limiter.admit("k").allowed


def test_idle_bucket_holds_at_most_burst_and_keys_are_apart() -> None:
    clock = FakeClock()
    limiter = RateLimiter(10, 2, clock)
    clock.now += 3600
    assert [limiter.admit("sk_first").allowed for _ in range(3)] == [True, True, False]
    assert limiter.admit("sk_second").allowed
    assert "sk_" not in repr(limiter)


def test_a_client_at_exactly_the_rate_is_never_refused() -> None:
    clock = FakeClock()
    limiter = RateLimiter(10, 1, clock)
    for i in range(1000):
        clock.now = 100.0 + i * 0.1  # float steps that do not add up exactly
        assert limiter.admit("k").allowed, i


def test_threads_never_overspend_a_bucket() -> None:
    limiter = RateLimiter(1, 25, FakeClock())  # frozen clock: exactly 25 tokens, ever
    allowed: list[bool] = []
    lock = threading.Lock()

    def hammer() -> None:
        mine = [limiter.admit("shared").allowed for _ in range(100)]
        with lock:
            allowed.extend(mine)

    threads = [threading.Thread(target=hammer) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(allowed) == 25


# latency draws -----------------------------------------------------------------------------


def test_latency_draws_are_bounded_seeded_and_centred() -> None:
    spec = NetworkSpec(latency_ms=50, jitter_ms=20)
    network = Network(spec, seed=7)
    draws = [network.latency_s() for _ in range(2000)]
    assert all(0.030 <= d <= 0.070 for d in draws)
    assert abs(sum(draws) / len(draws) - 0.050) < 0.002
    again = Network(spec, seed=7)
    assert [again.latency_s() for _ in range(2000)] == draws
    assert Network(spec, seed=8).latency_s() != draws[0]
    network.configure(spec)  # configure restarts the draws
    assert network.latency_s() == draws[0]


def test_latency_without_jitter_is_exact_and_wide_jitter_clips_at_zero() -> None:
    assert {Network(NetworkSpec(latency_ms=80)).latency_s() for _ in range(5)} == {0.08}
    wide = Network(NetworkSpec(latency_ms=10, jitter_ms=30))
    draws = [wide.latency_s() for _ in range(500)]
    assert min(draws) == 0.0 and max(draws) <= 0.040
    off = Network(NetworkSpec())
    assert not off.has_latency and off.latency_s() == 0.0 and off.admit("k") is None


# the model -------------------------------------------------------------------------------


def test_spec_defaults_and_refusals() -> None:
    spec = NetworkSpec()
    assert (spec.latency_ms, spec.jitter_ms, spec.rate_limit_per_s, spec.burst) == (
        0,
        0,
        None,
        None,
    )
    assert spec.effective_burst is None and not spec.rate_limit_headers
    assert NetworkSpec(rate_limit_per_s=20).effective_burst == 20
    assert NetworkSpec(rate_limit_per_s=2.5).effective_burst == 3
    assert NetworkSpec(rate_limit_per_s=0.5).effective_burst == 1
    assert NetworkSpec(rate_limit_per_s=20, burst=1).effective_burst == 1
    for bad in (
        {"burst": 5},
        {"latency_ms": -1},
        {"jitter_ms": float("nan")},
        {"rate_limit_per_s": 0},
        {"rate_limit_per_s": 5, "burst": 0},
        {"latency": 5},
    ):
        with pytest.raises(ValidationError):
            NetworkSpec.model_validate(bad)


def test_scenario_file_python_api_and_overrides(tmp_path: Path) -> None:
    path = tmp_path / "net.yaml"
    path.write_text(
        "preset: small\nnetwork: {latency_ms: 40, jitter_ms: 10, rate_limit_per_s: 5, burst: 2}\n"
    )
    scenario = Scenario.load(path)
    expected = NetworkSpec(latency_ms=40, jitter_ms=10, rate_limit_per_s=5, burst=2)
    assert scenario.network == expected
    assert Simulator(scenario, now=NOW).network.spec == expected
    assert Scenario.named("small").network == NetworkSpec()
    override = NetworkSpec(latency_ms=5)
    assert Scenario.named("small", network=override).network == override
    assert scenario.with_overrides(network={"rate_limit_per_s": 1}).network.burst is None
    assert Simulator(scenario, now=NOW, network=override).network.spec == override
    json_path = tmp_path / "net.json"
    json_path.write_text('{"companies": [{"name": "x"}], "network": {"rate_limit_per_s": 3}}')
    assert Scenario.load(json_path).network.effective_burst == 3
    bad = tmp_path / "bad.yaml"
    bad.write_text("preset: small\nnetwork: {burst: 3}\n")
    with pytest.raises(ValidationError, match="burst needs rate_limit_per_s"):
        Scenario.load(bad)


# CLI flags ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [("80", (80.0, 0.0)), ("80,20", (80.0, 20.0)), (" 12.5 , 0 ", (12.5, 0.0)), ("0", (0.0, 0.0))],
)
def test_parse_latency(text: str, expected: tuple[float, float]) -> None:
    assert parse_latency(text) == expected


@pytest.mark.parametrize("text", ["", "fast", "80,", ",20", "80,20,5", "-1", "80,-5", "inf", "nan"])
def test_parse_latency_refusals(text: str) -> None:
    with pytest.raises(ValueError):
        parse_latency(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("20/s", 20.0), ("20", 20.0), ("0.5/s", 0.5), (" 7/S ", 7.0), ("off", None)],
)
def test_parse_rate(text: str, expected: float | None) -> None:
    assert parse_rate(text) == expected


@pytest.mark.parametrize("text", ["", "/s", "fast", "0", "0/s", "-2/s", "20/m", "inf"])
def test_parse_rate_refusals(text: str) -> None:
    with pytest.raises(ValueError):
        parse_rate(text)


def test_flags_override_the_scenario_field_by_field() -> None:
    base = NetworkSpec(latency_ms=40, jitter_ms=10, rate_limit_per_s=5, burst=2)
    flags = cli.network_from_flags
    assert flags(base) == base
    assert flags(base, latency_ms="80") == base.model_copy(
        update={"latency_ms": 80, "jitter_ms": 0}
    )
    assert flags(base, rate_limit="20/s") == base.model_copy(update={"rate_limit_per_s": 20})
    assert flags(base, burst=7).burst == 7
    assert flags(base, rate_limit="off") == NetworkSpec(latency_ms=40, jitter_ms=10)
    assert flags(NetworkSpec(), latency_ms="80,20", rate_limit="20") == NetworkSpec(
        latency_ms=80, jitter_ms=20, rate_limit_per_s=20
    )
    with pytest.raises(typer.BadParameter, match="a burst needs a rate limit"):
        flags(NetworkSpec(), burst=3)
    with pytest.raises(typer.BadParameter, match="a burst needs a rate limit"):
        flags(base, rate_limit="off", burst=3)


def _app() -> typer.Typer:
    app = typer.Typer()
    app.command()(cli.simulate)
    return app


@pytest.mark.parametrize(
    ("args", "flag", "message"),
    [
        (["--latency-ms", "80,x"], "--latency-ms", "not a number of milliseconds"),
        (["--latency-ms", "-5"], "--latency-ms", ">= 0"),
        (["--rate-limit", "fast"], "--rate-limit", "expected N/s"),
        (["--rate-limit", "0/s"], "--rate-limit", "positive"),
        (["--burst", "3"], "--burst", "a burst needs a rate limit"),
        (["--rate-limit", "5/s", "--burst", "0"], "--burst", "greater than or equal to 1"),
    ],
)
def test_bad_network_flags_are_usage_errors_naming_the_flag(
    args: list[str], flag: str, message: str
) -> None:
    result = CliRunner().invoke(_app(), ["--scenario", "small", "--port", "0", *args])
    assert result.exit_code == 2, result.output
    assert flag in result.output
    assert message in " ".join(result.output.replace("│", " ").split())


def test_cli_puts_flags_over_the_scenario_file_in_force(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "net.yaml"
    path.write_text("preset: small\nnetwork: {latency_ms: 40, rate_limit_per_s: 5, burst: 2}\n")
    served: list[Simulator] = []

    class NoServer:
        def run(self, sockets: Any) -> None:
            pass

    def make_server(sim: Simulator, log_level: str = "warning") -> NoServer:
        served.append(sim)
        return NoServer()

    monkeypatch.setattr(cli, "make_server", make_server)
    args = ["--scenario", str(path), "--port", "0", "--now", "2025-03-15T12:00:00Z"]
    result = CliRunner().invoke(_app(), [*args, "--latency-ms", "80,20", "--rate-limit", "20/s"])
    assert result.exit_code == 0, result.output
    (sim,) = served
    assert sim.network.spec == NetworkSpec(
        latency_ms=80, jitter_ms=20, rate_limit_per_s=20, burst=2
    )
    assert "network: latency 80 ms +/- 20 ms, rate limit 20/s per key, burst 2" in result.output
    plain = CliRunner().invoke(_app(), ["--scenario", "small", "--port", "0"])
    assert plain.exit_code == 0, plain.output
    assert served[1].network.spec == NetworkSpec()
    assert "network: no added latency, no rate limit" in plain.output
