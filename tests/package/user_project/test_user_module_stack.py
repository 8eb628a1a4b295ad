"""A module that wants a stack of its own (module scope), beside the session's."""


def test_module_stack_is_another(amlemu, amlemu_module, ml_client_module):
    assert amlemu_module.url != amlemu.url
    assert [c.name for c in ml_client_module.compute.list()] == []  # the session's cluster is not here
