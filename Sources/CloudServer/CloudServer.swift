import Hummingbird
/// The reference cloud server (arrives with the cloud issue).
public enum CloudServerModule {}
