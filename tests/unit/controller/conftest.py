"""A store of its own per test: the controller's pure-ish parts read and write it as in a real pass."""

import pytest

from emulator.store.db import Store


@pytest.fixture
def store(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'amlemu.db'}")
    yield store
    store.close()
