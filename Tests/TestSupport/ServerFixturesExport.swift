// The servers and hosts tests start (PostgreSQL, temporary folders, network-namespace hosts) live
// in ServerFixtures, which the cluster benchmark links too; tests see them through TestSupport.
@_exported import ServerFixtures
