export * from './config';
export { startGateway, type GatewayHandle, type GatewayAddresses, type StartGatewayOptions } from './gateway';
export { certificateCluster } from './identity';
export { loadConfigFile, parseConfigText, watchConfig } from './config-file';
export { planRules, renderRules, applyRules, RULES_CHAIN, type RuleCommand } from './rules';
export * as protocol from './protocol';
export { AddressPolicy } from './policy';
export { loadNative, tryLoadNative, type NativeAddon } from './native';
