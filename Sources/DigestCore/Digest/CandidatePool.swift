/// The articles that may be picked this run, newest first, with topic and language indexes for
/// ranking.
///
/// Built once per run from the articles published in the fortnight before the week's end (with a day
/// of slack either side for time zones); each user then takes the ones inside their own window.
///
/// Ranking uses bit sets over the articles (bit *i* is article *i*, newest first): one per topic and
/// one per language. A user's candidates in a 64-article word are the articles of the word inside
/// their window and in one of their languages; those sharing a topic with the user are scored (the
/// sum of the user's weights of the topics they carry) and the best kept, newest first among equal
/// scores; the rest fill what is left, newest first. The scan stops early once every kept article
/// has the best score any article can reach.
public struct CandidatePool: Sendable {
    /// Newest first; ties broken by id so picks are deterministic.
    public let articles: [Article]
    /// The articles' ids in the same order (asking an id of `articles` copies the whole article).
    let ids: [String]
    /// For each topic, the articles that carry it, as bits.
    let topicBits: [String: [UInt64]]
    /// For each primary language subtag, the articles in it, as bits.
    let languageBits: [String: [UInt64]]
    /// The articles without a (recognised) language: candidates for every reader.
    let unlabelledBits: [UInt64]
    /// Words per bit set.
    let words: Int
    /// The most distinct topics any article carries: no article shares more with a user.
    let maxTopicsPerArticle: Int

    public init(articles: [Article]) {
        let sorted = articles.sorted {
            $0.publishedAt != $1.publishedAt ? $0.publishedAt > $1.publishedAt : $0.id < $1.id
        }
        let words = (sorted.count + 63) / 64
        var bits: [String: [UInt64]] = [:]
        var languages: [String: [UInt64]] = [:]
        var unlabelled = [UInt64](repeating: 0, count: words)
        var most = 0
        for (index, article) in sorted.enumerated() {
            let bit: UInt64 = 1 << UInt64(index & 63)
            let topics = Set(article.topics)
            most = max(most, topics.count)
            for topic in topics {
                bits[topic, default: [UInt64](repeating: 0, count: words)][index >> 6] |= bit
            }
            if let language = article.language.flatMap(LanguageTag.primary) {
                languages[language, default: [UInt64](repeating: 0, count: words)][index >> 6] |= bit
            } else {
                unlabelled[index >> 6] |= bit
            }
        }
        self.articles = sorted
        self.ids = sorted.map(\.id)
        self.topicBits = bits
        self.languageBits = languages
        self.unlabelledBits = unlabelled
        self.words = words
        self.maxTopicsPerArticle = most
    }

    /// Up to `limit` articles published in `[from, until)`, not in `exclude`, ranked by how many of
    /// `topics` they share, then by recency; any language.
    public func pick(
        limit: Int, publishedFrom from: Int64, until: Int64, topics: some Sequence<String>,
        excluding exclude: Set<String>
    ) -> [Article] {
        pick(
            limit: limit, publishedFrom: from, until: until, weights: Dictionary(topics.map { ($0, 1) }, uniquingKeysWith: { a, _ in a }),
            languages: nil, excluding: exclude)
    }

    /// Up to `limit` articles published in `[from, until)`, in one of `languages` (primary subtags;
    /// `nil`: any) or without a language, not in `exclude`; ranked by the sum of `weights` of the
    /// topics they carry, then by recency (then id). Articles sharing no weighted topic come last,
    /// newest first.
    public func pick(
        limit: Int, publishedFrom from: Int64, until: Int64, weights: [String: Int], languages: Set<String>?,
        excluding exclude: Set<String>
    ) -> [Article] {
        pick(limit: limit, publishedFrom: from, until: until, weights: weights, languages: languages) { exclude.contains($0) }
    }

    /// As ``pick(limit:publishedFrom:until:weights:languages:excluding:)``, with the articles left out
    /// given by `isExcluded` (asked only of articles that would otherwise be picked).
    public func pick(
        limit: Int, publishedFrom from: Int64, until: Int64, weights: [String: Int], languages: Set<String>?,
        isExcluded: (String) -> Bool
    ) -> [Article] {
        pick(
            limit: limit, publishedFrom: from, until: until, weights: weights.map { ($0.key, $0.value) },
            languages: languages.map(Array.init), isExcluded: isExcluded)
    }

    /// As above, with the weights as (topic, weight) pairs, each topic once, and the languages as a
    /// list (primary subtags; `nil`: any).
    public func pick(
        limit: Int, publishedFrom from: Int64, until: Int64, weights: [(topic: String, weight: Int)], languages: [String]?,
        isExcluded: (String) -> Bool
    ) -> [Article] {
        guard limit > 0, !articles.isEmpty else { return [] }
        // The window as an index range: articles are newest first.
        let first = firstIndex { $0.publishedAt < until }
        let end = firstIndex { $0.publishedAt < from }
        guard first < end else { return [] }
        // Heaviest first; equal weights by topic, so the order (and the scan) does not depend on the
        // order the weights came in.
        var sets: [(bits: [UInt64], weight: Int, topic: String)] = []
        sets.reserveCapacity(weights.count)
        for entry in weights where entry.weight > 0 {
            if let bits = topicBits[entry.topic] { sets.append((bits, entry.weight, entry.topic)) }
        }
        sets.sort { $0.weight != $1.weight ? $0.weight > $1.weight : $0.topic < $1.topic }
        let languageSets = languages.map { $0.compactMap { languageBits[$0] } }
        let low = first >> 6
        let count = (end - 1) >> 6 - low + 1
        let topics = sets.count
        let weightsSorted = sets.map(\.weight)
        return withUnsafeTemporaryAllocation(of: UInt64.self, capacity: (2 + topics) * count) { buffer in
            // candidates[w]: the word's articles in the window and languages; covered[w]: those sharing
            // one of the topics scanned so far; topicWords[k * count + w]: topic k's bits (heaviest
            // first), copied once so the scoring loop reads plain words.
            let candidates = buffer.baseAddress!
            let covered = candidates + count
            let topicWords = covered + count
            for slot in 0..<count {
                let word = low + slot
                var mask: UInt64 = ~0
                if word == low { mask &= ~0 << UInt64(first & 63) }
                if slot == count - 1, end & 63 != 0 { mask &= (1 << UInt64(end & 63)) - 1 }
                if let languageSets {
                    var allowed = unlabelledBits[word]
                    for set in languageSets { allowed |= set[word] }
                    mask &= allowed
                }
                candidates[slot] = mask
                covered[slot] = 0
            }
            for (k, set) in sets.enumerated() {
                for slot in 0..<count { topicWords[k * count + slot] = set.bits[low + slot] }
            }
            // Scored: the articles sharing a topic, grouped by the heaviest topic they share (group j
            // scores at most the weights of topics j, j + 1, … as many as an article carries); the best
            // `limit` kept by score, then index (newest first). Once the worst kept beats a group's
            // bound, no later group can place.
            var kept: [(score: Int, index: Int)] = []
            kept.reserveCapacity(limit)
            for group in 0..<topics {
                let bound = weightsSorted[group..<min(topics, group + maxTopicsPerArticle)].reduce(0, +)
                if kept.count == limit && kept[limit - 1].score > bound { break }
                for slot in 0..<count {
                    let bits = topicWords[group * count + slot]
                    var matching = candidates[slot] & bits & ~covered[slot]
                    covered[slot] |= bits
                    while matching != 0 {
                        let bit = matching & (~matching &+ 1)
                        let index = (low + slot) << 6 | matching.trailingZeroBitCount
                        matching &= matching - 1
                        var score = weightsSorted[group]
                        var slots = maxTopicsPerArticle - 1  // further topics the article may carry
                        if kept.count == limit {
                            // Once the kept are full, the article must reach the worst of them: stop
                            // scoring when even the heaviest topics left cannot get it there (weights
                            // fall along k, so `slots` times the next weight bounds what is left).
                            let worst = kept[limit - 1]
                            let needed = index < worst.index ? worst.score : worst.score + 1
                            var k = group + 1
                            while k < topics && slots > 0 && score + slots * weightsSorted[k] >= needed {
                                if topicWords[k * count + slot] & bit != 0 {
                                    score += weightsSorted[k]
                                    slots -= 1
                                }
                                k += 1
                            }
                            if score < needed { continue }
                        } else {
                            var k = group + 1
                            while k < topics && slots > 0 {
                                if topicWords[k * count + slot] & bit != 0 {
                                    score += weightsSorted[k]
                                    slots -= 1
                                }
                                k += 1
                            }
                        }
                        if isExcluded(ids[index]) { continue }
                        var position = kept.count
                        while position > 0
                            && (kept[position - 1].score < score
                                || (kept[position - 1].score == score && kept[position - 1].index > index))
                        {
                            position -= 1
                        }
                        if kept.count == limit { kept.removeLast() }
                        kept.insert((score, index), at: position)
                    }
                }
            }
            var picked = kept.map { articles[$0.index] }
            guard picked.count < limit else { return picked }
            // Every group was scanned (a full `kept` returned above): the rest fill, newest first.
            for slot in 0..<count {
                var matching = candidates[slot] & ~covered[slot]
                while matching != 0 {
                    let index = (low + slot) << 6 | matching.trailingZeroBitCount
                    matching &= matching - 1
                    guard !isExcluded(ids[index]) else { continue }
                    picked.append(articles[index])
                    if picked.count == limit { return picked }
                }
            }
            return picked
        }
    }

    /// The first index whose article satisfies `isPast` (`articles.count` if none); `isPast` must be
    /// false then true along the array.
    private func firstIndex(where isPast: (Article) -> Bool) -> Int {
        var low = 0
        var high = articles.count
        while low < high {
            let mid = (low + high) / 2
            if isPast(articles[mid]) { high = mid } else { low = mid + 1 }
        }
        return low
    }
}
