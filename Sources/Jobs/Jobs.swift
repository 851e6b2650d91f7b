/// Job files, kinds, runner (arrive with the runner issue).
public enum JobsModule {}
