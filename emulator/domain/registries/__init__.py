"""Azure ML registries: ids and discovery (ids.py), the built-in `azureml` registry (builtin.py). Pure."""
