"""`python -m jacobi_min <command>`: the commands live in `jacobi_min/tools/commands.py`."""
from .tools.commands import main

main()
