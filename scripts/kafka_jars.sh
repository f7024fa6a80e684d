#!/usr/bin/env bash
# Fetches the jars of an Apache Kafka broker (KRaft mode) from Maven Central into a
# cache directory, for the Kafka export's tests (crates/cli/tests/kafka.rs):
#
#   scripts/kafka_jars.sh [DIR]      (default: ${CARGO_TARGET_DIR:-target}/kafka-jars)
#
# A small pom names org.apache.kafka:kafka_2.13 (the broker: kafka.Kafka,
# kafka.tools.StorageTool), kafka-server and kafka-tools (the command-line tools:
# org.apache.kafka.tools.TopicCommand is kafka-topics.sh,
# org.apache.kafka.tools.consumer.ConsoleConsumer kafka-console-consumer.sh, for
# scripts/kafka_recipe.sh); `mvn dependency:copy-dependencies` puts them and everything
# they need (runtime scope) into DIR/jars. Nothing is fetched when DIR/jars/.complete
# names the same version and set. Run with `java -cp 'DIR/jars/*'`.
set -euo pipefail
KAFKA_VERSION="${KAFKA_VERSION:-4.1.1}"
# What .complete holds: the version, and the set of artifacts (bumped when it changes).
stamp="$KAFKA_VERSION broker+tools"
dir="${1:-${CARGO_TARGET_DIR:-target}/kafka-jars}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
if [ -f "$dir/jars/.complete" ] && [ "$(cat "$dir/jars/.complete")" = "$stamp" ]; then
  echo "$dir/jars"
  exit 0
fi
command -v mvn >/dev/null 2>&1 || { echo "mvn (Apache Maven) is not installed" >&2; exit 2; }
rm -rf "$dir/jars"
cat > "$dir/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>tapstat.test</groupId>
  <artifactId>kafka-broker-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_2.13</artifactId>
      <version>${KAFKA_VERSION}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka-server</artifactId>
      <version>${KAFKA_VERSION}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka-tools</artifactId>
      <version>${KAFKA_VERSION}</version>
    </dependency>
    <!-- The broker logs through SLF4J to Log4j 2, whose core Kafka declares for runtime only in its distribution. -->
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>2.24.3</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-core</artifactId>
      <version>2.24.3</version>
    </dependency>
  </dependencies>
</project>
POM
mvn -q -B -f "$dir/pom.xml" dependency:copy-dependencies \
  -DincludeScope=runtime -DoutputDirectory="$dir/jars" >&2
echo "$stamp" > "$dir/jars/.complete"
echo "$dir/jars"
