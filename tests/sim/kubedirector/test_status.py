"""Member state machine, role resizing and rollup of the simulated KubeDirector (pure functions)."""

from __future__ import annotations

from kdsim.kubedirector import roles
from kdsim.kubedirector import status as st


def _pod(phase="Running", ready=True, cid="containerd://abc", uid="u1"):
    return {
        "metadata": {"uid": uid},
        "status": {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [
                {"name": "app", "containerID": cid, "state": {"running": {}} if phase == "Running" else {"waiting": {}}}
            ],
        },
    }


def test_member_goes_create_pending_creating_configured():
    m = st.new_member("kdss-abcde", 0, 1, has_storage=True)
    assert m == {
        "pod": "kdss-abcde-0",
        "service": "",
        "nodeID": 1,
        "state": "create pending",
        "stateDetail": {},
        "pvc": "p-kdss-abcde-0",
    }
    assert not st.observe_member(m, None)
    assert m["stateDetail"]["lastKnownContainerState"] == "absent"
    assert st.observe_member(m, _pod(ready=False))
    assert m["state"] == "creating" and m["stateDetail"]["lastKnownContainerState"] == "unresponsive"
    assert st.observe_member(m, _pod(ready=True))
    assert m["state"] == "configured"
    assert m["stateDetail"]["lastConfiguredContainer"] == "containerd://abc"
    assert not st.observe_member(m, _pod(ready=True))


def test_restarted_member_is_rechecked():
    m = st.new_member("s", 0, 1, has_storage=False)
    st.observe_member(m, _pod())
    st.observe_member(m, _pod())
    assert m["state"] == "configured"
    st.observe_member(m, None)  # pod deleted
    assert m["state"] == "create pending"
    assert st.rollup([{"members": [m]}])["membersRestarting"] is True
    st.observe_member(m, _pod(cid="containerd://new"))
    st.observe_member(m, _pod(cid="containerd://new"))
    assert m["state"] == "configured" and m["stateDetail"]["lastConfiguredContainer"] == "containerd://new"


def test_resize_grows_then_shrinks_from_the_end():
    status = {"lastNodeID": 4}
    role = {"id": "r", "statefulSet": "kdss-x", "members": []}
    assert roles.resize(role, 2, False, status)
    assert [m["pod"] for m in role["members"]] == ["kdss-x-0", "kdss-x-1"]
    assert [m["nodeID"] for m in role["members"]] == [5, 6] and status["lastNodeID"] == 6
    assert roles.live_count(role) == 2
    role["members"][0]["state"] = role["members"][1]["state"] = st.CONFIGURED
    assert roles.resize(role, 1, False, status)
    assert [m["state"] for m in role["members"]] == ["configured", "delete pending"]
    assert roles.live_count(role) == 1
    # No growth while a deletion is still in flight.
    assert not roles.resize(role, 3, False, status)


def test_cluster_state_and_rollup():
    assert st.cluster_state("", False) == "creating"
    assert st.cluster_state("creating", True) == "configured"
    assert st.cluster_state("configured", False) == "updating"
    r = st.rollup([{"members": [{"state": "deleting"}, {"state": "config error"}]}])
    assert r["membershipChanging"] and r["configErrors"] and not r["membersDown"]
    assert st.connections_hash([("a", "")]) != st.connections_hash([("a", "7")])


def test_stable_needs_every_role_at_its_size_and_configured():
    ready = {"id": "a", "members": [{"state": "configured"}]}
    assert roles.stable({"a": 1}, [ready])
    assert not roles.stable({"a": 2}, [ready])
    assert not roles.stable({"a": 1}, [ready, {"id": "gone", "members": []}])
    assert not roles.stable({"a": 1}, [{"id": "a", "members": [{"state": "creating"}]}])
    assert roles.stable({"a": 1, "b": 0}, [ready])
