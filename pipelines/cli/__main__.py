from pipelines.cli.main import main

main()
