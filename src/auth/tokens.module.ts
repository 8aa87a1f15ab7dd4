import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ApiToken } from './api-token.entity';
import { TokensService } from './tokens.service';

/** API tokens, for the command-line tool as well as the service's guard. */
@Module({
  imports: [TypeOrmModule.forFeature([ApiToken])],
  providers: [TokensService],
  exports: [TokensService],
})
export class TokensModule {}
