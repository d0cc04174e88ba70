export { until } from '@skald/testing/until';
