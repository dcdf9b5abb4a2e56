import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

// An OTLP/HTTP receiver on 127.0.0.1 for tests: keeps every export request, and decodes the
// OTLP/JSON ones (the protobuf encoding's JSON mapping: ids in hex, attributes as typed
// AnyValues, 64-bit integers as strings or numbers) into spans and metric points.

export interface Received {
  readonly path: string;
  readonly contentType: string;
  readonly body: Buffer;
}

export type AttributeValue = string | number | boolean | undefined;

export interface ReceivedSpan {
  readonly name: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  readonly kind: number;
  readonly attributes: Record<string, AttributeValue>;
  readonly resource: Record<string, AttributeValue>;
  readonly startMs: number;
  readonly endMs: number;
}

export interface ReceivedPoint {
  readonly metric: string;
  readonly value: number;
  /** A histogram point's count. */
  readonly count?: number;
  readonly attributes: Record<string, AttributeValue>;
  readonly resource: Record<string, AttributeValue>;
}

export interface OtlpReceiver {
  readonly url: string;
  readonly requests: Received[];
  spans(): ReceivedSpan[];
  points(): ReceivedPoint[];
  /** Resolves once `test` holds for the spans received, or rejects after `ms`. */
  waitFor(test: (spans: ReceivedSpan[]) => boolean, ms?: number): Promise<void>;
  stop(): Promise<void>;
}

interface KeyValue {
  key: string;
  value: { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean };
}

function attributes(list: KeyValue[] | undefined): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const { key, value } of list ?? []) out[key] = value.stringValue ?? (value.intValue === undefined ? undefined : Number(value.intValue)) ?? value.doubleValue ?? value.boolValue;
  return out;
}

const hex = (id: string | undefined): string => (id === undefined || id === '' ? '' : /^[0-9a-f]+$/i.test(id) ? id.toLowerCase() : Buffer.from(id, 'base64').toString('hex'));
const ms = (nanos: string | number | undefined): number => Number(BigInt(nanos ?? 0) / 1_000_000n);

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const requests: Received[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push({ path: req.url ?? '', contentType: String(req.headers['content-type'] ?? ''), body: Buffer.concat(chunks) });
      const json = String(req.headers['content-type']).startsWith('application/json');
      res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' }).end(json ? '{}' : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const decoded = (path: string) => requests.filter((r) => r.path === path && r.contentType.startsWith('application/json')).map((r) => JSON.parse(r.body.toString('utf8')) as Record<string, unknown>);
  const spans = (): ReceivedSpan[] =>
    decoded('/v1/traces').flatMap((body) =>
      (body.resourceSpans as { resource?: { attributes?: KeyValue[] }; scopeSpans: { spans: Record<string, unknown>[] }[] }[]).flatMap((rs) =>
        rs.scopeSpans.flatMap((ss) =>
          ss.spans.map((s) => ({
            name: s.name as string,
            traceId: hex(s.traceId as string),
            spanId: hex(s.spanId as string),
            parentSpanId: hex(s.parentSpanId as string | undefined),
            kind: Number(s.kind ?? 0),
            attributes: attributes(s.attributes as KeyValue[]),
            resource: attributes(rs.resource?.attributes),
            startMs: ms(s.startTimeUnixNano as string),
            endMs: ms(s.endTimeUnixNano as string),
          })),
        ),
      ),
    );
  const points = (): ReceivedPoint[] =>
    decoded('/v1/metrics').flatMap((body) =>
      (body.resourceMetrics as { resource?: { attributes?: KeyValue[] }; scopeMetrics: { metrics: Record<string, { dataPoints?: Record<string, unknown>[] } | string>[] }[] }[]).flatMap((rm) =>
        rm.scopeMetrics.flatMap((sm) =>
          sm.metrics.flatMap((m) => {
            const data = (m.sum ?? m.histogram ?? m.gauge) as { dataPoints?: Record<string, unknown>[] };
            return (data.dataPoints ?? []).map((p) => ({
              metric: m.name as string,
              value: Number(p.asInt ?? p.asDouble ?? p.sum ?? 0),
              ...(p.count === undefined ? {} : { count: Number(p.count) }),
              attributes: attributes(p.attributes as KeyValue[]),
              resource: attributes(rm.resource?.attributes),
            }));
          }),
        ),
      ),
    );
  return {
    url,
    requests,
    spans,
    points,
    async waitFor(test, within = 30_000) {
      const deadline = Date.now() + within;
      while (!test(spans())) {
        if (Date.now() > deadline) throw new Error(`the receiver did not get the spans expected within ${within} ms (got ${spans().map((s) => s.name).join(', ')})`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
