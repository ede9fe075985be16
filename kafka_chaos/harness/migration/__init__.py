"""The ZooKeeper→KRaft migration (KIP-866) as the harness drives and observes it: the node
properties of each phase (:mod:`.properties`), what says which phase a cluster is in
(:mod:`.status`), and the observer that reads whichever controller is in charge
(:mod:`.observer`)."""
