// ts-jest needs the @nestjs/swagger CLI plugin wrapped as a named, versioned AST transformer;
// its options come from nest-cli.json so tests and builds generate the same document.
const plugin = require('@nestjs/swagger/plugin');
const nestCli = require('../nest-cli.json');

const { options } = nestCli.compilerOptions.plugins.find(
  (entry) => entry.name === '@nestjs/swagger',
);

module.exports.name = 'nestjs-swagger-transformer';
// bump to invalidate ts-jest's cache when the options change
module.exports.version = 1;
module.exports.factory = (compiler) => plugin.before(options, compiler.program);
