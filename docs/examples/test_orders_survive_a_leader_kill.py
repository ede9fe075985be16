"""An example of a user's own test with kafka-chaos's pytest plugin (docs/pytest.md).

Run it with:  pytest docs/examples/test_orders_survive_a_leader_kill.py
"""

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_chaos.oracle import BrokerFailure
from kafka_chaos.scenarios.model.targets import LeaderOf

pytestmark = pytest.mark.kafka_chaos


def create_orders_topic(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic("orders", num_partitions=2, replica_assignment=[[1, 2, 3], [2, 3, 1]])])
    futures["orders"].result(timeout=30)


def test_the_leader_of_orders_dies_and_kafka_does_what_the_oracle_says(kafka_cluster, chaos, oracle):
    create_orders_topic(kafka_cluster.bootstrap_servers)

    # What should happen if broker 1 died now? (a question, nothing is injected)
    prediction = oracle.predict(BrokerFailure((1,)), topics=["orders"])
    assert prediction.state.partition("orders", 0).leader == 2

    # Kill the leader of orders-0 for real, wait for Kafka, check it against the oracle.
    verdict = chaos.step("hard_kill", LeaderOf("orders", 0), topics=["orders"])
    verdict.assert_ok()
    assert verdict.observation.after.partitions[("orders", 0)].leader == 2

    # The cluster still takes writes.
    producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap_servers, "acks": "all"})
    producer.produce("orders", key=b"k", value=b"v", partition=0)
    assert producer.flush(30) == 0
