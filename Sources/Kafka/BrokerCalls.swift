import Common

extension BlockingExecutor {
    /// librdkafka's blocking requests (metadata, offsets, topic creation,
    /// a client's close): their own threads, so that a broker that does not
    /// answer holds these and not the store's or the senders'.
    package static let broker = BlockingExecutor("broker", threads: 4)
}
