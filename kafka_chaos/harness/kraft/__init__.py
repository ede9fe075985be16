"""KRaft clusters: the controllers' metadata log read as records (:mod:`.records`), replayed into
the controller's view of the cluster (:mod:`.image`) and watched (:mod:`.observer`)."""
