"""The simulated KubeDirector: its model of KDApps and KDClusters and what it renders from them (pure)."""
