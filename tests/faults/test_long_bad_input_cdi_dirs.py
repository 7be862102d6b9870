"""The long run of ``tests/property/test_bad_input_cdi_dirs.py``.

Collected only with ``--faults-long``; its Hypothesis settings were read from
:mod:`tests.faults.settings` when it was imported.
"""

import pytest

from tests.property.test_bad_input_cdi_dirs import *  # noqa: F403

pytestmark = pytest.mark.faults_long
