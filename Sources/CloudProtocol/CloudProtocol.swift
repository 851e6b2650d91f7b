/// Wire types shared by the client and cloudd (arrive with the cloud issue).
public enum CloudProtocolModule {}
