"""``mechanism-model call NAME`` needs no ``--type`` for any service the suite's nodes offer: every node of the
registry is started over the in-memory transport (rover, arm-only and walker models) and each service it
creates must resolve, by name alone, to the very type the node registered it with."""

import pytest

from mechanism_model_core import load_model
from mechanism_model_core.library import model_path

pytestmark = pytest.mark.ros

# the model each node needs (the locomotor a wheeled rover, the legged node a walker, the manipulator
# joint-trajectory motor groups)
MODELS = {"legged": "lemur/lemur_hexapod.xml", "manipulator": "mer/mer_idd.xml"}


def _services_of(node_name: str, namespace: str = "") -> list[tuple[str, str]]:
    from mechanism_model_ros.nodes import Served, create
    from mechanism_model_ros.transports.memory import MemoryBus, MemoryNode

    created = []

    class Recording(MemoryNode):
        def create_service(self, name, srv_type, handler, **kw):
            svc = super().create_service(name, srv_type, handler, **kw)
            created.append((self._name(name), srv_type))
            return svc

    served = Served(load_model(model_path(MODELS.get(node_name, "rocky8/rocky8_rover.xml"))), "test")
    node = create(node_name, Recording(node_name, bus=MemoryBus(), namespace=namespace), served)
    close = getattr(node, "close", None)
    if close:
        close()
    return created


@pytest.mark.parametrize("node_name", ["kinematics_server", "statics_server", "locomotor", "manipulator",
                                       "legged", "state_publisher", "reach_server"])
def test_every_service_of_every_node_resolves_without_type(node_name):
    from mechanism_model_ros.client_cli import service_type
    for ns in ("", "rover1"):
        for full, srv_type in _services_of(node_name, ns):
            if "/_action/" in full:     # an action's own send_goal/get_result services (its client calls them)
                continue
            assert service_type(full) == srv_type, (node_name, full)
            assert service_type(full.lstrip("/")) == srv_type, (node_name, full)


def test_the_nodes_offer_the_services_the_docs_name():
    names = {n for node in ("kinematics_server", "statics_server", "locomotor", "manipulator", "reach_server")
             for n, _ in _services_of(node)}
    for want in ("/compute_ik", "/compute_statics", "/check_state_validity", "/compute_base_placement",
                 "/locomotor/stop",
                 "/locomotor/drive_mode/crab", "/manipulator/execute_trajectory", "/manipulator/cancel"):
        assert want in names, sorted(names)


def test_an_unknown_service_has_no_type():
    from mechanism_model_ros.client_cli import service_type
    assert service_type("/no_such_service") is None
    assert service_type("") is None
