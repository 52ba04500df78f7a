"""ROS-layer tests: make mechanism_model_ros importable from a source checkout and skip cleanly where the
Cyclone DDS / rosbags pieces are missing."""

import os
import sys

import pytest

ROS_PKG = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                       "mechanism_model_ros")
if ROS_PKG not in sys.path:
    sys.path.insert(0, ROS_PKG)

pytest.importorskip("cyclonedds", reason="needs cyclonedds from PyPI")
pytest.importorskip("rosbags", reason="needs rosbags from PyPI")


@pytest.fixture(scope="module", autouse=True)
def close_what_the_module_opened(no_threads_left_running):
    """Every in-memory bus and Cyclone context made during a test module is closed after it (its fixtures
    first): many tests make nodes inline and never close them, and a bus's timer thread or a context's
    dispatcher would otherwise run on in the pytest worker through every later module (test/conftest.py's
    ``no_threads_left_running`` checks afterwards that none is left)."""
    from mechanism_model_ros.transports.cyclone import CycloneContext
    from mechanism_model_ros.transports.memory import MemoryBus

    made = []
    with pytest.MonkeyPatch.context() as mp:
        for cls in (MemoryBus, CycloneContext):
            def tracking_init(self, *args, _init=cls.__init__, **kwargs):
                _init(self, *args, **kwargs)
                made.append(self)
            mp.setattr(cls, "__init__", tracking_init)
        yield
    for obj in reversed(made):
        obj.close()
