"""`python -m simulator --port ... --scenario ... --seed ...`; benchmarks run it as a subprocess."""

import typer

from simulator.cli import simulate

if __name__ == "__main__":
    typer.run(simulate)
