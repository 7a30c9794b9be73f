// gen-fixtures.js writes the KPL fixtures with the awslabs Node aggregator
// (npm aws-kinesis-agg 4.2.8), so that shardline's decoder is tested on
// bytes that it did not encode itself:
//
//   internal/kpl/testdata/awslabs-node.json       records in, aggregate out
//   internal/ingest/testdata/kinesis-kpl.json     a Kinesis event for the handler
//   events/kinesis-kpl-batch.json                 the sample invocation
//
// The fixtures are committed; this script only remakes them. From the
// repository root:
//
//   npm install --prefix /tmp/kplgen aws-kinesis-agg@4.2.8
//   NODE_PATH=/tmp/kplgen/node_modules node internal/kpl/testdata/gen-fixtures.js
//
// Everything in it is fixed, so the output is the same on every run.
'use strict';
const fs = require('fs');
const agg = require('aws-kinesis-agg');

// aggregate packs records into one aggregated record's bytes.
function aggregate(records) {
	const a = new agg.RecordAggregator();
	for (const r of records) {
		a.addUserRecord(Object.assign({}, r, { data: Buffer.from(r.data) }));
	}
	return a.build().data;
}

// The decoder's fixture: each case's records and the aggregate of them.
const cases = [
	{ name: 'one record', records: [{ partitionKey: 'p0', data: '{"hello":"world"}' }] },
	{
		name: 'keys, hash keys, binary and empty data',
		records: [
			{ partitionKey: 'orders', explicitHashKey: '170141183460469231731687303715884105728', data: 'first' },
			{ partitionKey: 'iot/fleet-7', data: Buffer.from([0xff, 0x00, 0xf3, 0x89, 0x9a, 0xc2, 0x80]) },
			// No key may look like an array index ('1', '42'): the aggregator
			// numbers keys in the order first seen but writes its tables in
			// JavaScript's key order, which puts those first, so two such keys
			// would come back swapped. The hash keys here are beyond 2^32.
			{ partitionKey: 'orders', explicitHashKey: '85070591730234615865843651857942052864', data: Buffer.alloc(0) },
			{ partitionKey: 'ü #/%', explicitHashKey: '170141183460469231731687303715884105728', data: 'x'.repeat(300) },
			{ partitionKey: 'iot/fleet-7', data: 'last' },
		],
	},
	{
		// 300 partition keys: indexes past 127 take two varint bytes.
		name: '300 records, 300 keys',
		records: Array.from({ length: 300 }, (_, i) => ({ partitionKey: `key-${i}`, data: `{"n":${i}}` })),
	},
];
const b64 = (b) => Buffer.from(b).toString('base64');
const decoderFixture = cases.map((c) => ({
	name: c.name,
	records: c.records.map((r) => ({
		partition_key: r.partitionKey,
		explicit_hash_key: r.explicitHashKey || '',
		data: b64(Buffer.from(r.data)),
	})),
	aggregate: b64(aggregate(c.records)),
}));

// kinesisRecord is a record of a Lambda Kinesis event.
const stream = 'arn:aws:kinesis:us-east-1:000000000000:stream/shardline-events';
function kinesisRecord(shard, seq, partitionKey, data, arrival) {
	return {
		kinesis: {
			kinesisSchemaVersion: '1.0',
			partitionKey: partitionKey,
			sequenceNumber: seq,
			data: b64(data),
			approximateArrivalTimestamp: arrival,
		},
		eventSource: 'aws:kinesis',
		eventVersion: '1.0',
		eventID: `shardId-${shard}:${seq}`,
		eventName: 'aws:kinesis:record',
		invokeIdentityArn: 'arn:aws:iam::000000000000:role/shardline-ingest',
		awsRegion: 'us-east-1',
		eventSourceARN: stream,
	};
}
const seq = (n) => '4965650000000000000000000000000000000000000000000000' + String(n).padStart(4, '0');
const ev = (o) => JSON.stringify(Object.assign({ specversion: '1.0', type: 'com.example.test' }, o));

// The handler's fixture: a plain record, an aggregate with arrays and
// invalid sub-records, an aggregate of one, and a corrupt aggregate.
const arrival = 1795348500.25; // 2026-11-22T11:55:00.25Z
const mixed = aggregate([
	{ partitionKey: 'a', data: ev({ id: 'kpl-1-0', source: 'kpl-test', time: '2026-11-22T11:00:00Z' }) },
	{ partitionKey: 'b', data: '[' + ev({ id: 'kpl-1-1a', source: 'kpl-test', time: '2026-11-22T11:01:00Z' }) + ',' +
		ev({ id: 'kpl-1-1b', source: 'kpl-test', time: '2026-11-22T11:02:00Z' }) + ']' },
	{ partitionKey: 'a', data: '{"id":"kpl-1-2","source":"kpl-test"' },
	{ partitionKey: 'c', explicitHashKey: '85070591730234615865843651857942052864', data: ev({ id: 'kpl-1-3', source: 'kpl-test' }) },
	{ partitionKey: 'b', data: '[' + ev({ id: 'kpl-1-4a', source: 'kpl-test', time: '2026-11-22T11:04:00Z' }) +
		',{"specversion":"1.0","id":"kpl-1-4b","source":"kpl-test"}]' },
]);
const single = aggregate([{ partitionKey: 'a', data: ev({ id: 'kpl-2-0', source: 'kpl-test', time: '2026-11-22T11:05:00Z' }) }]);
const corrupt = Buffer.from(single);
corrupt[corrupt.length - 1] ^= 0xff; // the digest's last byte
const handlerFixture = {
	Records: [
		kinesisRecord('000000000001', seq(1), 'plain', ev({ id: 'plain-1', source: 'kpl-test', time: '2026-11-22T10:59:00Z' }), arrival),
		kinesisRecord('000000000001', seq(2), 'a', mixed, arrival),
		kinesisRecord('000000000001', seq(3), 'a', single, arrival),
		kinesisRecord('000000000001', seq(4), 'a', corrupt, arrival),
	],
};

// The sample: what a KPL producer of telemetry sends, beside a plain record.
const reading = (id, truck, time, extra) => JSON.stringify(Object.assign({
	specversion: '1.0', id: id, source: 'iot/fleet-7', type: 'com.example.telemetry.reading',
	subject: `truck/${truck}`, time: time, datacontenttype: 'application/json',
}, extra));
const sample = {
	Records: [
		kinesisRecord('000000000003', '49656500000000000000000000000000000000000000000000001000', 'truck/DE-4411', aggregate([
			{ partitionKey: 'truck/DE-4411', data: reading('t-000201', 'DE-4411', '2026-11-22T11:50:00.100Z', { data: { lat: 52.5200066, lon: 13.404954, speed_kmh: 71.5 } }) },
			{ partitionKey: 'truck/PL-0032', data: reading('t-000202', 'PL-0032', '2026-11-22T11:50:00.350Z', { data: { lat: 50.0646501, lon: 19.9449799, speed_kmh: 0 } }) },
			{ partitionKey: 'truck/DE-4411', data: '[' +
				reading('t-000203', 'DE-4411', '2026-11-22T11:50:01.100Z', { data: { lat: 52.5201, lon: 13.4051, speed_kmh: 72 } }) + ',' +
				reading('t-000204', 'DE-4411', '2026-11-22T11:50:02.100Z', { data: { lat: 52.5202, lon: 13.4053, speed_kmh: 72.5 } }) + ']' },
			{ partitionKey: 'truck/CZ-1207', data: reading('t-000205', 'CZ-1207', undefined, { data: { lat: 50.0755381, lon: 14.4378005, speed_kmh: 48 } }) },
		]), 1795348500.5),
		kinesisRecord('000000000003', '49656500000000000000000000000000000000000000000000001001', 'orders-service',
			JSON.stringify({ specversion: '1.0', id: 'ord-7f3ab1', source: 'orders-service', type: 'com.example.order.created',
				time: '2026-11-22T11:50:03Z', subject: 'order/10490', data: { order_id: 10490 } }), 1795348500.75),
	],
};

const write = (path, v) => fs.writeFileSync(path, JSON.stringify(v, null, 2) + '\n');
write('internal/kpl/testdata/awslabs-node.json', decoderFixture);
write('internal/ingest/testdata/kinesis-kpl.json', handlerFixture);
write('events/kinesis-kpl-batch.json', sample);
