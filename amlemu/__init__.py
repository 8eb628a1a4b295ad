"""amlemu's Python API: a local emulator of Azure Machine Learning compute, for scripts and test suites.

    import amlemu

    with amlemu.start() as emu:       # builds the images it lacks, starts a stack of its own on free ports
        ml_client = emu.ml_client()   # the unmodified azure-ai-ml SDK, pointed at it
        ...
    # every container, network and volume it made is gone

`amlemu.connect(url)` uses a stack already running (`amlemu up`) and leaves it running. For pytest the plugin
gives the `amlemu` and `ml_client` fixtures (amlemu.pytest_plugin); for testcontainers users,
amlemu.testcontainers.AmlEmuContainer.
"""

from amlemu.session import Emulator, connect, start

__all__ = ["Emulator", "connect", "start"]
