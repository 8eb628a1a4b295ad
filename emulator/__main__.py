"""Entry point of the emulator's own processes: `python -m emulator api|controller|node`."""

from emulator.processes import main

main()
