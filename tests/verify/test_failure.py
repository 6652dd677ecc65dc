"""What counts as a faulty node taken out of service after the retry."""

from goodput_agent.verify.failure import out_of_service


def test_a_node_is_out_of_service_when_drained_listed_by_sinfo_r_or_cordoned() -> None:
    assert out_of_service({"state": "IDLE+DRAIN"}) and out_of_service({"state": "DOWN"})
    assert out_of_service({"state": "", "reason": "goodput: Xid 79"})  # a sinfo -R row
    assert out_of_service({"name": "n", "ready": True, "unschedulable": True})
    assert not out_of_service({"state": "IDLE"}) and not out_of_service({"unschedulable": False})
