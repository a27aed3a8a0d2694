"""Run by Python at start-up in processes with this folder on PYTHONPATH: install the test faults."""

import injection

injection.install()
