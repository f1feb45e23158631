from pipelines.cli.entry import run

run()
