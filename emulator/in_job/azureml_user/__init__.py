"""The `azureml_user` package scoring scripts of Azure's parallel run step import (installed beside the runner)."""
