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
    /// Every bit set, `words` words each, one after another: the articles without a (recognised)
    /// language first (candidates for every reader), then those of each language and of each topic
    /// at their offsets. One array, so a pick reads them all through one buffer pointer.
    let bits: [UInt64]
    /// For each topic, where the set of the articles that carry it starts in `bits`.
    let topicOffsets: [String: Int]
    /// For each primary language subtag, where the set of the articles in it starts in `bits`.
    let languageOffsets: [String: Int]
    /// Each topic's place in the topics' order (`<`), by its set's place in `bits` (its offset over
    /// `words`): equal weights are ranked by it without comparing the topics' strings.
    let topicRanks: [Int]
    /// Words per bit set.
    let words: Int
    /// The most distinct topics any article carries: no article shares more with a user.
    let maxTopicsPerArticle: Int

    public init(articles: [Article]) {
        let sorted = articles.sorted {
            $0.publishedAt != $1.publishedAt ? $0.publishedAt > $1.publishedAt : $0.id < $1.id
        }
        let words = (sorted.count + 63) / 64
        var bits = [UInt64](repeating: 0, count: words)  // the unlabelled set
        var topicOffsets: [String: Int] = [:]
        var languageOffsets: [String: Int] = [:]
        func offset(_ key: String, in offsets: inout [String: Int]) -> Int {
            if let offset = offsets[key] { return offset }
            offsets[key] = bits.count
            bits.append(contentsOf: repeatElement(0, count: words))
            return bits.count - words
        }
        var most = 0
        for (index, article) in sorted.enumerated() {
            let bit: UInt64 = 1 << UInt64(index & 63)
            let topics = Set(article.topics)
            most = max(most, topics.count)
            for topic in topics {
                bits[offset(topic, in: &topicOffsets) + index >> 6] |= bit
            }
            if let language = article.language.flatMap(LanguageTag.primary) {
                bits[offset(language, in: &languageOffsets) + index >> 6] |= bit
            } else {
                bits[index >> 6] |= bit
            }
        }
        self.articles = sorted
        self.ids = sorted.map(\.id)
        self.bits = bits
        self.topicOffsets = topicOffsets
        self.languageOffsets = languageOffsets
        var topicRanks = [Int](repeating: 0, count: words > 0 ? bits.count / words : 0)
        for (rank, topic) in topicOffsets.keys.sorted().enumerated() { topicRanks[topicOffsets[topic]! / words] = rank }
        self.topicRanks = topicRanks
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
        pick(limit: limit, publishedFrom: from, until: until, weights: weights, languages: languages, muted: [], isExcluded: isExcluded)
    }

    /// As above, never an article carrying one of `muted` (a reader's muted topics): their sets are
    /// taken out of the candidates before anything is scored.
    package func pick(
        limit: Int, publishedFrom from: Int64, until: Int64, weights: [(topic: String, weight: Int)], languages: [String]?,
        muted: [String], isExcluded: (String) -> Bool
    ) -> [Article] {
        guard limit > 0, !articles.isEmpty else { return [] }
        // The window as an index range: articles are newest first.
        let first = firstIndex { $0.publishedAt < until }
        let end = firstIndex { $0.publishedAt < from }
        guard first < end else { return [] }
        // Heaviest first; equal weights by topic, so the order (and the scan) does not depend on the
        // order the weights came in.
        var sets: [(offset: Int, weight: Int, rank: Int)] = []
        sets.reserveCapacity(weights.count)
        for entry in weights where entry.weight > 0 {
            if let offset = topicOffsets[entry.topic] { sets.append((offset, entry.weight, topicRanks[offset / words])) }
        }
        sets.sort { $0.weight != $1.weight ? $0.weight > $1.weight : $0.rank < $1.rank }
        let languageSets = languages.map { $0.compactMap { languageOffsets[$0] } }
        // Muted topics' sets are taken out of the candidates (no array for a reader without any).
        let mutedSets = muted.isEmpty ? [] : muted.compactMap { topicOffsets[$0] }
        let low = first >> 6
        let count = (end - 1) >> 6 - low + 1
        let topics = sets.count
        let weightsSorted = sets.map(\.weight)
        // Where topic k's words of the window start in `bits` (heaviest first).
        let topicStarts = sets.map { $0.offset + low }
        return bits.withUnsafeBufferPointer { pool in
            withUnsafeTemporaryAllocation(of: UInt64.self, capacity: (2 + topics) * count) { buffer in
                // candidates[w]: the word's articles in the window and languages; covered[w]: those sharing
                // one of the topics scanned so far; laterWords[k * count + w]: the articles carrying any
                // topic after k (an article of group k without one scores exactly the weight of k).
                let bitWords = pool.baseAddress!
                let candidates = buffer.baseAddress!
                let covered = candidates + count
                let laterWords = covered + count
                for slot in 0..<count {
                    let word = low + slot
                    var mask: UInt64 = ~0
                    if word == low { mask &= ~0 << UInt64(first & 63) }
                    if slot == count - 1, end & 63 != 0 { mask &= (1 << UInt64(end & 63)) - 1 }
                    if let languageSets {
                        var allowed = bitWords[word]
                        for set in languageSets { allowed |= bitWords[set + word] }
                        mask &= allowed
                    }
                    for set in mutedSets { mask &= ~bitWords[set + word] }
                    candidates[slot] = mask
                    covered[slot] = 0
                }
                if topics > 0 {
                    let last = laterWords + (topics - 1) * count
                    for slot in 0..<count { last[slot] = 0 }
                    for k in stride(from: topics - 2, through: 0, by: -1) {
                        let row = laterWords + k * count, next = laterWords + (k + 1) * count
                        let nextTopic = bitWords + topicStarts[k + 1]
                        for slot in 0..<count { row[slot] = next[slot] | nextTopic[slot] }
                    }
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
                        let bits = bitWords[topicStarts[group] + slot]
                        var matching = candidates[slot] & bits & ~covered[slot]
                        covered[slot] |= bits
                        if matching != 0 && kept.count == limit {
                            // The least any article of this word needs to place: the worst kept's score, one
                            // more when the whole word is older. Below it, only articles carrying a later
                            // topic can place (on a large pool most carry one topic: this skips them by the
                            // word instead of one by one).
                            let worst = kept[limit - 1]
                            let needed = (low + slot) << 6 > worst.index ? worst.score + 1 : worst.score
                            if weightsSorted[group] < needed { matching &= laterWords[group * count + slot] }
                        }
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
                                    if bitWords[topicStarts[k] + slot] & bit != 0 {
                                        score += weightsSorted[k]
                                        slots -= 1
                                    }
                                    k += 1
                                }
                                if score < needed { continue }
                            } else {
                                var k = group + 1
                                while k < topics && slots > 0 {
                                    if bitWords[topicStarts[k] + slot] & bit != 0 {
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
    }

    /// The article ``pick(limit:publishedFrom:until:weights:languages:muted:isExcluded:)`` with a limit
    /// of 1 would give if only articles carrying one of `within` were candidates (the best by the sum
    /// of `weights` of its topics, then the newest): found by scoring just those articles in the
    /// window and languages, none of `muted` (a followed topic's few), without the ranking's tables.
    package func best(
        publishedFrom from: Int64, until: Int64, weights: [(topic: String, weight: Int)], languages: [String]?, muted: [String],
        within: [String], isExcluded: (String) -> Bool
    ) -> Article? {
        let first = firstIndex { $0.publishedAt < until }
        let end = firstIndex { $0.publishedAt < from }
        let withinSets = within.compactMap { topicOffsets[$0] }
        guard first < end, !withinSets.isEmpty else { return nil }
        let mutedSets = muted.compactMap { topicOffsets[$0] }
        let languageSets = languages.map { $0.compactMap { languageOffsets[$0] } }
        // Scored by the weighted topics' bit sets, as the ranking scores (no article is read).
        var weightSets: [(offset: Int, weight: Int)] = []
        for entry in weights where entry.weight > 0 {
            if let offset = topicOffsets[entry.topic] { weightSets.append((offset, entry.weight)) }
        }
        var best: (score: Int, index: Int)?
        for word in (first >> 6)...((end - 1) >> 6) {
            var mask: UInt64 = 0
            for set in withinSets { mask |= bits[set + word] }
            if word == first >> 6 { mask &= ~0 << UInt64(first & 63) }
            if word == (end - 1) >> 6, end & 63 != 0 { mask &= (1 << UInt64(end & 63)) - 1 }
            if let languageSets {
                var allowed = bits[word]
                for set in languageSets { allowed |= bits[set + word] }
                mask &= allowed
            }
            for set in mutedSets { mask &= ~bits[set + word] }
            while mask != 0 {
                let bit = mask & (~mask &+ 1)
                let index = word << 6 | mask.trailingZeroBitCount
                mask &= mask - 1
                // Indices rise: on an equal score the one found first is the newer.
                var score = 0
                for set in weightSets where bits[set.offset + word] & bit != 0 { score += set.weight }
                if let current = best, current.score >= score { continue }
                if isExcluded(ids[index]) { continue }
                best = (score, index)
            }
        }
        return best.map { articles[$0.index] }
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
