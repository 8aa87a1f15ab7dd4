/** Settings: a module declares its own (`declareSettings`), and reads the app's through `appConfig`. */
export { appConfig, type AppConfig } from './app.config';
export {
  ConfigError,
  metaOf,
  moduleSettingNames,
  parseEnvironment,
  unknownSettingWarnings,
} from './environment';
export {
  declareSettings,
  defineSettings,
  setting,
  type SettingsOf,
} from './module-settings';
