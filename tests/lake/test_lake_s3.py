"""A lake's data on S3: a real S3 endpoint on loopback (moto's server mode), credentials from the
AWS variables every client reads, never stored or printed."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from benchmarks.harness.postgres import free_port
from tests.conftest import serving
from tests.lake.conftest import lake_rows
from tests.lake.test_lake import LEDGER, _one_company_env
from tests.pipeline.helpers import cli_in_process, truth

SECRET = "s3-secret-never-printed-7f3a"


@pytest.fixture
def s3() -> Iterator[tuple[str, dict[str, str]]]:
    """An S3 endpoint with a bucket, and the variables a user sets for it."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.put(f"{url}/creditlens-lake", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "moto's S3 server did not start"
            time.sleep(0.2)
        yield (
            url,
            {
                "AWS_ACCESS_KEY_ID": "creditlens-test",
                "AWS_SECRET_ACCESS_KEY": SECRET,
                "AWS_REGION": "us-east-1",
                "AWS_ENDPOINT_URL": url,
            },
        )
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.slow
def test_a_lake_keeps_its_data_on_s3(
    tmp_path: Path, lake_location: str, s3: tuple[str, dict[str, str]]
) -> None:
    url, aws = s3
    with serving("small") as s:
        env = _one_company_env(
            s, tmp_path / "lake", lake_location,
            CREDITLENS_LAKE_DATA_PATH="s3://creditlens-lake/warehouse/", **aws,
        )  # fmt: skip
        outputs = []
        for _ in range(2):  # a first sync, then a daily one
            done = cli_in_process("sync", env=env)
            assert done.returncode == 0, done.stderr[-2000:]
            outputs.append(done.stdout + done.stderr)
        assert sorted(lake_rows(lake_location, LEDGER, s3=aws)) == truth(s)
    listed = httpx.get(f"{url}/creditlens-lake", params={"list-type": "2"}).text
    assert listed.count(".parquet</Key>") >= 3 and "<Key>warehouse/main/" in listed
    assert not (tmp_path / "lake" / "data").exists()  # nothing of the lake's data stayed local
    stand_in = (tmp_path / "lake" / "warehouse.lake").read_text()
    for text in (*outputs, stand_in):
        assert SECRET not in text
