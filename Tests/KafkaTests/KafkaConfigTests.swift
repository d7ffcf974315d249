import Common
import Kafka
import XCTest

final class KafkaConfigTests: XCTestCase {
    func testPropertiesComeFromKafkaVariables() throws {
        let config = try KafkaConfig.fromEnvironment(
            Environment([
                "KAFKA_BOOTSTRAP_SERVERS": "kafka-1:9092,kafka-2:9092",
                "KAFKA_SECURITY_PROTOCOL": "plaintext",
                "KAFKA_SOCKET_KEEPALIVE_ENABLE": "true",
                "PATH": "/usr/bin"
            ]))
        XCTAssertEqual(config.bootstrapServers, "kafka-1:9092,kafka-2:9092")
        XCTAssertEqual(config.properties, ["security.protocol": "plaintext", "socket.keepalive.enable": "true"])
    }

    func testABadPropertyNamesItsVariable() {
        XCTAssertThrowsError(try KafkaConfig.fromEnvironment(Environment(["KAFKA_NO_SUCH_THING": "1"]))) { error in
            XCTAssertEqual((error as? ConfigurationError)?.variable, "KAFKA_NO_SUCH_THING")
        }
        XCTAssertThrowsError(try KafkaConfig.fromEnvironment(Environment(["KAFKA_SECURITY_PROTOCOL": "carrier-pigeon"]))) { error in
            XCTAssertEqual((error as? ConfigurationError)?.variable, "KAFKA_SECURITY_PROTOCOL")
        }
    }

    func testTheGuaranteesCannotBeTurnedOff() {
        for variable in ["KAFKA_ENABLE_IDEMPOTENCE", "KAFKA_ACKS", "KAFKA_ENABLE_AUTO_COMMIT", "KAFKA_ENABLE_AUTO_OFFSET_STORE"] {
            XCTAssertThrowsError(try KafkaConfig.fromEnvironment(Environment([variable: "false"]))) { error in
                XCTAssertEqual((error as? ConfigurationError)?.variable, variable)
            }
        }
    }

    func testMessageTimeoutVariableIsTheDeliveryTimeout() throws {
        let kafka = try KafkaConfig.fromEnvironment(Environment(["KAFKA_MESSAGE_TIMEOUT_MS": "2500"]))
        let producer = ProducerConfig(kafka: kafka)
        XCTAssertEqual(producer.deliveryTimeout, .milliseconds(2500))
        XCTAssertNil(producer.kafka.properties["message.timeout.ms"])
    }
}
