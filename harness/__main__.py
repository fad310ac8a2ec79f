"""``python -m fleetchaos``: the command line."""

from fleetchaos.cli.main import main

main(prog_name="fleetchaos")
