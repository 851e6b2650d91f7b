/// MediaBox: the file cache of media resources (arrives with the MediaBox issue).
public enum MediaBoxModule {}
