import { backfillFeature } from './backfill/feature.ts';
import { contractsFeature } from './contracts/feature.ts';
import { driftFeature } from './drift/feature.ts';
import { incrementalFeature } from './incremental/feature.ts';
import type { FeatureRun, JobFeature, JobFeatureKind } from './run/feature.ts';

/**
 * The job features, in the order a run applies them: an output's branch passes the contracts, then
 * the incremental cursor, then drift's reshaping. A new feature is a folder implementing
 * `JobFeature` and one line here.
 */
export const FEATURES = [contractsFeature, incrementalFeature, driftFeature, backfillFeature] as const satisfies readonly JobFeatureKind<object>[];

/** The plug-ins of the features a job uses, for one attempt of a run, a shard or a plan, in list order. */
export function createFeatures(run: FeatureRun): JobFeature[] {
  return FEATURES.flatMap((kind): JobFeature[] => {
    const feature = kind.create(run);
    return feature === undefined ? [] : [feature];
  });
}

/** What the features add to a run's summary: each one's part. */
export type FeatureSummary = UnionToIntersection<SummaryOf<(typeof FEATURES)[number]>>;

type SummaryOf<K> = K extends JobFeatureKind<infer S> ? S : never;
type UnionToIntersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;
