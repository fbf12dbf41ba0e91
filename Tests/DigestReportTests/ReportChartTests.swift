import DigestReport
import DigestStore
import Foundation
import Testing

#if canImport(FoundationXML)
import FoundationXML  // XMLParser, on Linux
#endif

/// `digest report --chart`: the bars are the report's open rates per variant and per arm, drawn to
/// scale with their intervals, in SVG that an XML parser reads.
@Suite struct ReportChartTests {
    static func counts(_ variant: String, _ platform: String, arm: String, sent: Int, opened: Int) -> EventCounts {
        EventCounts(variant: variant, platform: platform, locale: "en", arm: arm, sent: sent, received: sent, displayed: sent,
                    opened: opened, dismissed: 0, actions: 0)
    }

    /// Every `<g class="bar">` with its attributes, and the `x`/`width` of the rect inside it.
    final class Bars: NSObject, XMLParserDelegate {
        var bars: [[String: String]] = []
        var texts: [String] = []
        private var text = ""

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String] = [:]) {
            if name == "g" { bars.append(attributes) }
            if name == "rect", !bars.isEmpty, bars[bars.count - 1]["width"] == nil, attributes["height"] == "16" {
                bars[bars.count - 1]["width"] = attributes["width"]
            }
            text = ""
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            if name == "text" { texts.append(text) }
        }
    }

    static func parse(_ svg: String) throws -> Bars {
        let parser = XMLParser(data: Data(svg.utf8))
        let bars = Bars()
        parser.delegate = bars
        #expect(parser.parse(), "\(parser.parserError.map { "\($0)" } ?? "")\n\(svg)")
        return bars
    }

    @Test func barsAreTheOpenRatesPerVariantThenPerArmWithTheirIntervals() throws {
        let report = DeliveryReport(week: "2026-W47", counts: [
            Self.counts("Image", "android", arm: "image", sent: 300, opened: 90),
            Self.counts("Image", "ios", arm: "image", sent: 100, opened: 30),
            Self.counts("BigText", "android", arm: "text", sent: 400, opened: 80),
            Self.counts("Default", "web", arm: "text", sent: 0, opened: 0),
        ])
        let bars = ReportChart.bars(report)
        #expect(bars.map(\.label) == ["BigText", "Image", "image arm", "text arm"])
        #expect(bars.map(\.group) == ["variant", "variant", "arm", "arm"])
        #expect(bars.map(\.sent) == [400, 400, 400, 400] && bars.map(\.opened) == [80, 120, 120, 80])
        // Image: 120 of 400 = 30%, its Wilson interval as the report's.
        let image = try #require(bars.first { $0.label == "Image" })
        let wilson = try #require(OpenRateStatistics.wilson(successes: 120, trials: 400))
        #expect(image.rate == 0.3 && image.low == wilson.low && image.high == wilson.high)

        let parsed = try Self.parse(ReportChart.svg(report))
        #expect(parsed.bars.map { $0["data-label"] } == ["BigText", "Image", "image arm", "text arm"])
        // The axis ends at 40% (the highest interval's end, 34.7%, rounded up to a tenth); the plot is
        // 320 px wide, so 30% is 240 px and 20% 160 px.
        #expect(parsed.bars.map { $0["width"] } == ["160.0", "240.0", "240.0", "160.0"])
        #expect(parsed.texts.contains("30.0% (25.7–34.7%), 120 of 400"), "\(parsed.texts)")
        #expect(parsed.texts.contains("By arm (split week)") && parsed.texts.contains("40%"))
    }

    @Test func aWeekWithoutSentMessagesSaysSoAndLabelsAreEscaped() throws {
        let empty = try Self.parse(ReportChart.svg(DeliveryReport(week: "2026-W47", counts: [])))
        #expect(empty.bars.isEmpty && empty.texts.contains("no sent messages this week"))

        let odd = DeliveryReport(week: "2026-W47", counts: [Self.counts("<b>&\"x'\u{1}", "web", arm: "", sent: 10, opened: 1)])
        let parsed = try Self.parse(ReportChart.svg(odd))
        #expect(parsed.bars.map { $0["data-label"] } == ["<b>&\"x'"])
        // 1 of 10: the interval ends at 40.4%, so the axis at 50%.
        #expect(parsed.texts.contains("50%"))
    }
}
