export * from './config';
export { startGateway, certificateCluster, type GatewayHandle, type GatewayAddresses, type StartGatewayOptions } from './gateway';
export { loadConfigFile, parseConfigText, watchConfig } from './config-file';
export { planRules, renderRules, applyRules, RULES_CHAIN, type RuleCommand } from './rules';
export * as protocol from './protocol';
export { AddressPolicy } from './policy';
export { loadNative, tryLoadNative, type NativeAddon } from './native';
