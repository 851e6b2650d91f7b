import CCurl
/// The cloud client (arrives with the cloud issue).
public enum CloudCoreModule {}
