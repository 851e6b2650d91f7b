import Postbox

// The module `Postbox` also declares a class `Postbox`, so `Postbox.Message` cannot be written;
// these names tell Postbox's stored types apart from CloudProtocol's wire types of the same name.

/// Postbox's stored `Message` (the wire message is `CloudProtocol.Message`).
public typealias PostboxMessage = Message
/// Postbox's stored `Peer` (the wire peer is `CloudProtocol.Peer`).
public typealias PostboxPeer = Peer
