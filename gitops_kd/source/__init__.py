"""Git source: fetch a repo of KDApp/KDCluster specs and produce the desired state and change set."""
