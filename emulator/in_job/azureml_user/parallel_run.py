"""`from azureml_user.parallel_run import EntryScript`, as scoring scripts written for Azure's parallel run step do:
its logger (the worker's log, at the run's logging level), the output folder, and the working directory."""

import logging
import os


class EntryScript:
    def __init__(self):
        self.logger = logging.getLogger("azureml_user.parallel_run")
        self.output_dir = os.environ.get("AZUREML_PARALLEL_OUTPUT_DIR") or os.path.join(os.getcwd(), "outputs")
        self.working_dir = os.getcwd()
        self.log_dir = os.path.join(os.getcwd(), "logs", "user")
