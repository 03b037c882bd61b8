"""What the run loop calls besides the stepper: the tracker protocol and the cluster bookkeeping (counts,
identities, events, collapse of coincident nodes)."""
