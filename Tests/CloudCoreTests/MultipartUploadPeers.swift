import Postbox

/// Postbox's peer record, named apart from the protocol's `Peer` for the upload tests.
typealias UploadTestStoredPeer = Peer
