// Generates scala_groupby_order.txt: the iteration order of Scala 2.13's `groupBy` result
// (an immutable.HashMap, as in ZkReplicaStateMachine.handleStateChanges:
// `replicas.groupBy(_.replica).forKeyValue`) for many sets of Int broker ids, using the
// scala-library jar Kafka 3.9.2 ships.  Regenerate from the repository root with:
//   jshell --class-path ~/.cache/kafka-chaos/kafka-3.9.2/libs/scala-library-2.13.15.jar \
//       tests/unit/oracle/data/scala_groupby_order.jsh > tests/unit/oracle/data/scala_groupby_order.txt
// Each output line: the ids (ascending) TAB the order `foreachEntry` visits them.
import scala.jdk.javaapi.CollectionConverters;
import java.util.*;

String order(List<Integer> ids, Random shuffle) {
    var input = new ArrayList<Integer>(ids);
    Collections.shuffle(input, shuffle);  // groupBy's result must not depend on the input order
    scala.Function1<Integer, Integer> identity = x -> x;
    var grouped = CollectionConverters.asScala(input).toList().groupBy(identity);
    if (!grouped.getClass().getName().equals("scala.collection.immutable.HashMap"))
        throw new IllegalStateException(grouped.getClass().getName());
    var visited = new StringBuilder();
    grouped.foreachEntry((k, v) -> { visited.append(visited.length() == 0 ? "" : " ").append(k); return null; });
    var sorted = new ArrayList<Integer>(ids);
    Collections.sort(sorted);
    var key = new StringBuilder();
    for (int id : sorted) key.append(key.length() == 0 ? "" : " ").append(id);
    return key + "\t" + visited;
}

var out = new LinkedHashSet<String>();
var shuffle = new Random(7);
// every non-empty subset of 0..9
for (int mask = 1; mask < (1 << 10); mask++) {
    var ids = new ArrayList<Integer>();
    for (int i = 0; i < 10; i++) if ((mask & (1 << i)) != 0) ids.add(i);
    out.add(order(ids, shuffle));
}
// every pair and triple of 0..20
for (int a = 0; a <= 20; a++) for (int b = a + 1; b <= 20; b++) {
    out.add(order(List.of(a, b), shuffle));
    for (int c = b + 1; c <= 20; c++) out.add(order(List.of(a, b, c), shuffle));
}
// ranges 0..n and 1..n, and 1000..1000+n (Kafka's generated broker ids start at 1001)
for (int n = 1; n <= 40; n++) {
    for (int start : new int[] {0, 1, 1000}) {
        var ids = new ArrayList<Integer>();
        for (int i = start; i <= start + n; i++) ids.add(i);
        out.add(order(ids, shuffle));
    }
}
// random sets of 4..40 ids below 2048 (deep tries: several ids share hash bits)
var random = new Random(42);
for (int round = 0; round < 300; round++) {
    var ids = new TreeSet<Integer>();
    int size = 4 + random.nextInt(37);
    while (ids.size() < size) ids.add(random.nextInt(2048));
    out.add(order(new ArrayList<Integer>(ids), shuffle));
}
for (String line : out) System.out.println(line);
/exit
