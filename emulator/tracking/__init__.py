"""The workspaces' MLflow tracking server, as the api talks to it: the only module that calls it."""
