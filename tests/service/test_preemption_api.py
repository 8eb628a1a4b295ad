"""The emulator's preemption controls over REST: preempt now, a cluster's policy, a job's history; refusals
name the field and change nothing."""

from datetime import UTC, datetime

from emulator.store.tables import Node
from tests.service.test_api import API, COMPUTES, WS_PATH, assert_arm_error, cluster

EMU = f"/_emulator{WS_PATH}/computes"


def _cluster(client, auth, name: str, priority: str) -> str:
    response = client.put(f"{COMPUTES}/{name}", params=API, headers=auth, json=cluster(vmPriority=priority))
    assert response.status_code in (200, 201), response.text
    return f"{COMPUTES}/{name}".lower()


def _node(app, compute_key: str, node_id: str, state: str = "running") -> None:
    now = datetime.now(UTC)
    with app.state.context.store.transaction() as repo:
        repo.add(Node(node_id=node_id, compute_key=compute_key, state=state, container_id="c-" + node_id,
                      created_at=now, state_changed_at=now))


def _nodes(app, compute_key: str) -> dict[str, Node]:
    with app.state.context.store.transaction() as repo:
        return {n.node_id: n for n in repo.nodes(compute_key)}


def test_preempting_gives_a_running_node_a_notice(app, client, auth):
    key = _cluster(client, auth, "spot", "LowPriority")
    _node(app, key, "tvmps_idle_p", "idle")
    _node(app, key, "tvmps_busy_p", "running")
    response = client.post(f"{EMU}/spot/preempt", params=API, headers=auth)
    assert response.status_code == 202, response.text
    answer = response.json()
    assert answer["nodeId"] == "tvmps_busy_p" and answer["notBefore"].endswith(" GMT")
    notice = _nodes(app, key)["tvmps_busy_p"].notice
    assert notice["eventId"] == answer["eventId"] and notice["status"] == "Scheduled"
    # The named node; then one already under notice is refused, naming the node.
    assert client.post(f"{EMU}/spot/preempt", params=API, headers=auth,
                       json={"nodeId": "tvmps_idle_p"}).status_code == 202
    error = assert_arm_error(client.post(f"{EMU}/spot/preempt", params=API, headers=auth,
                                         json={"nodeId": "tvmps_idle_p"}), 409, target="nodeId")
    assert "already has a preemption notice" in error["message"]
    error = assert_arm_error(client.post(f"{EMU}/spot/preempt", params=API, headers=auth), 409,
                             target="computeName")
    assert "no node to preempt" in error["message"]


def test_refusals_name_the_problem_and_change_nothing(app, client, auth):
    dedicated = _cluster(client, auth, "steady", "Dedicated")
    _node(app, dedicated, "tvmps_d_d")
    error = assert_arm_error(client.post(f"{EMU}/steady/preempt", params=API, headers=auth), 409,
                             target="computeName")
    assert "only LowPriority nodes can be preempted" in error["message"]
    spot = _cluster(client, auth, "spot", "LowPriority")
    _node(app, spot, "tvmps_a_p")
    error = assert_arm_error(client.post(f"{EMU}/spot/preempt", params=API, headers=auth,
                                         json={"nodeId": "tvmps_nope_p"}), 404, target="nodeId")
    assert "tvmps_a_p" in error["message"]
    assert_arm_error(client.post(f"{EMU}/missing/preempt", params=API, headers=auth), 404, target="computeName")
    assert all(n.notice is None for n in [*_nodes(app, dedicated).values(), *_nodes(app, spot).values()])
    assert client.post(f"{EMU}/spot/preempt", params=API).status_code == 401


def test_a_clusters_policy_is_read_and_set_with_its_fields_checked(app, client, auth):
    _cluster(client, auth, "spot", "LowPriority")
    url = f"{EMU}/spot/preemption"
    default = {"meanSecondsBetweenPreemptions": None, "seed": None, "onPreemption": "requeue"}
    assert client.get(url, params=API, headers=auth).json() == default
    for body, target in [({"meanSecondsBetweenPreemptions": -1}, "meanSecondsBetweenPreemptions"),
                         ({"seed": "x"}, "seed"), ({"onPreemption": "ignore"}, "onPreemption")]:
        assert_arm_error(client.put(url, params=API, headers=auth, json=body), 400, target=target)
    assert client.get(url, params=API, headers=auth).json() == default
    response = client.put(url, params=API, headers=auth, json={"meanSecondsBetweenPreemptions": 10, "seed": 3})
    assert response.status_code == 200 and response.json() == {"meanSecondsBetweenPreemptions": 10.0, "seed": 3,
                                                               "onPreemption": "requeue"}
    assert client.get(url, params=API, headers=auth).json()["seed"] == 3
    _cluster(client, auth, "steady", "Dedicated")
    assert_arm_error(client.put(f"{EMU}/steady/preemption", params=API, headers=auth, json={}), 409,
                     target="computeName")
